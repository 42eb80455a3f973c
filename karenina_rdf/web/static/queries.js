// The named-query forms. A parameter left empty is left out of the URL, so an optional one stays
// unbound and a default applies (an empty value would be bound as the empty string); the format
// choice goes only with "Run", the one button that has a formaction of its own.
(function () {
  "use strict";
  var forms = document.querySelectorAll("form.query-form");
  Array.prototype.forEach.call(forms, function (form) {
    var toEditor = true;
    form.addEventListener("submit", function (event) {
      toEditor = !(event.submitter && event.submitter.hasAttribute("formaction"));
    });
    form.addEventListener("formdata", function (event) {
      var drop = [];
      event.formData.forEach(function (value, key) {
        if (value === "" || (toEditor && key === "format")) {
          drop.push(key);
        }
      });
      drop.forEach(function (key) {
        event.formData.delete(key);
      });
    });
  });
})();
