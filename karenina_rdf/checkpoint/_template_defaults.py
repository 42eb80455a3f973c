"""Answer templates: Karenina's default template and the "has a template" rule."""

from __future__ import annotations


def default_template(question: str) -> str:
    """The template Karenina writes for a question added without one."""
    return (
        "class Answer(BaseAnswer):\n"
        f'    """Answer template for: {question[:50]}..."""\n'
        "\n"
        '    response: str = Field(description="The answer response")\n'
        "\n"
        "    def verify(self) -> bool:\n"
        "        # Default template: returns False to indicate custom verification needed\n"
        "        return False\n"
    )


def is_default_template(code: str, question: str | None = None) -> bool:
    """Karenina compares the stripped text with the default made from the question's text.

    Without the question text the marker lines are compared, which is what an import can do
    before the question is known; the two agree for every template Karenina generates.
    """
    if not code:
        return False
    if question is not None:
        return code.strip() == default_template(question).strip()
    lines = code.strip().split("\n")
    return (
        len(lines) == 8
        and lines[0] == "class Answer(BaseAnswer):"
        and lines[1].startswith('    """Answer template for: ')
        and "\n".join(lines[2:]) == "\n".join(default_template("").strip().split("\n")[2:])
    )


def template_name(question: str) -> str:
    """The SoftwareSourceCode name Karenina writes (always with '...')."""
    return f"{question[:30]}... Answer Template"
