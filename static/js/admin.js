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

// A change list on a phone: each row a card (table.cards, static/css/cards.css), each cell headed by its
// column's name, read from the header (Django renders the cells without one). The row's first field, a
// row header linking to the object, heads the card; the checkbox column has no name.
document.addEventListener("DOMContentLoaded", () => {
  const table = document.getElementById("result_list");
  if (!table || !table.tHead) return;
  // (the name alone: not a sorted column's priority beside it)
  const names = [...table.tHead.rows[0].cells].map((th) => (th.querySelector(".text") ?? th).textContent.trim());
  for (const row of table.tBodies[0].rows) {
    [...row.cells].forEach((cell, i) => {
      if (cell.tagName === "TD" && names[i] && !cell.hasAttribute("colspan")) cell.dataset.label = names[i];
    });
  }
  table.classList.add("cards");
});
