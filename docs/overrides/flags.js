// Searching a flag as the docs write it ("--resume", "--commit-every").
//
// Material's search hands the query to lunr, which reads a leading "-" as "must not contain":
// "--resume" found nothing at all. The search box keeps what was typed, but the search reads a
// flag as "+rollway +resume" (both words required, as whole words): every flag has its own
// section in the command-line reference, titled "rollway COMMAND --FLAG", the one section with
// both in its title, which the title's weight puts first. The search box is patched as
// soon as it is parsed, before Material's bundle reads it (a shared `?q=` link included).
(function () {
  var asTyped = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value");
  var flags = function (q) { return q.replace(/(^|\s)--?([A-Za-z][\w-]*)/g, "$1+rollway +$2"); };
  var patch = function (el) {
    Object.defineProperty(el, "value", {
      configurable: true,
      get: function () { return flags(asTyped.get.call(this)); },
      set: function (v) { asTyped.set.call(this, v); }
    });
  };
  new MutationObserver(function (_, observer) {
    var el = document.querySelector("[data-md-component=search-query]");
    if (el) {
      patch(el);
      observer.disconnect();
    }
  }).observe(document.documentElement, { childList: true, subtree: true });
})();
