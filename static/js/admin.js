// Django's admin (templates/admin/base_site.html). SelectFilter2.js, on window load, gives the filter
// icons of its two-list widget (plain spans) an aria-label, which ARIA allows only with a role: they are
// images naming the help they stand for. DOMContentLoaded comes after every script of the page has run,
// so this load listener is added after SelectFilter2's and runs after it.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  window.addEventListener("load", () => {
    for (const icon of document.querySelectorAll(".help-tooltip[aria-label]:not([role])")) {
      icon.setAttribute("role", "img");
    }
  });
});
