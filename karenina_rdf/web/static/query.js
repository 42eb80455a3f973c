// The SPARQL editor page: YASGUI (static/yasgui/, vendored) on this server's /sparql, with the
// named queries of the side list loading into it. Nothing here talks to another host.
(function () {
  "use strict";

  var config = JSON.parse(document.getElementById("query-config").textContent);
  var endpoint = new URL(config.endpoint, window.location.href).href;
  var Yasgui = window.Yasgui;

  // The "property" and "class" autocompleters ask the Linked Open Vocabularies service on
  // another host; only the variable and prefix ones (bundled prefix list) stay on this page.
  Yasgui.Yasqe.defaults.autocompleters = ["variables", "prefixes"];
  delete Yasgui.Yasqe.Autocompleters.property;
  delete Yasgui.Yasqe.Autocompleters["class"];
  // The prefix completer offers (and declares on use) this store's prefixes rather than its
  // bundled list, where schema: is http://schema.org/ and would hide every stored triple. A data:
  // URL keeps it on this page.
  Yasgui.Yasqe.defaults.prefixCcApi =
    "data:application/json," + encodeURIComponent(JSON.stringify(config.completionPrefixes));
  // A tab passes its own (unset) height over the yasqe option, so the default is set here.
  Yasgui.Yasqe.defaults.editorHeight = "380px";

  var yasgui = new Yasgui(document.getElementById("yasgui"), {
    persistenceId: "karenina-rdf-sparql",
    requestConfig: { endpoint: endpoint, method: "POST" },
    copyEndpointOnNewTab: true,
    // The endpoint field offers this server only (the default list names public endpoints).
    endpointCatalogueOptions: {
      getData: function () {
        return [{ endpoint: endpoint }];
      },
      keys: []
    },
    yasqe: { value: config.defaultQuery },
    yasr: { prefixes: config.prefixes, defaultPlugin: "table" }
  });
  window.kareninaYasgui = yasgui; // for the browser test and the console

  function load(text, title) {
    var tab = yasgui.getTab();
    if (!tab) {
      tab = yasgui.addTab(true);
    }
    tab.setQuery(text);
    if (title) {
      tab.setName(title);
    }
    var yasqe = tab.getYasqe();
    if (yasqe) {
      yasqe.focus();
    }
  }

  // A query opened from the queries page (/query/NAME?…) goes into a tab of its own, unless a
  // tab already holds exactly that text.
  if (config.initial) {
    var existing = null;
    var ids = yasgui.persistentConfig.getTabs();
    for (var i = 0; i < ids.length; i++) {
      var tab = yasgui.getTab(ids[i]);
      if (tab && tab.getQuery() === config.initial.text) {
        existing = ids[i];
      }
    }
    if (existing) {
      yasgui.selectTabId(existing);
    } else {
      yasgui.addTab(true, { name: config.initial.title, yasqe: { value: config.initial.text } });
    }
  }

  var buttons = document.querySelectorAll("button.named-query");
  Array.prototype.forEach.call(buttons, function (button) {
    button.addEventListener("click", function () {
      var query = config.queries[button.getAttribute("data-query")];
      if (query) {
        load(query.text, query.title);
      }
    });
  });
})();
