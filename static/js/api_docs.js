// Swagger UI's page (templates/drf_spectacular/swagger_ui.html): names for the controls and regions
// Swagger UI draws without one, as an operation opens or is tried out. An enum parameter's <select> is
// named after its parameter, the request body's editor "Request body", a response table (role="region",
// one per operation) after its operation, e.g. "Responses of GET /api/v1/runs/"; the Authorize dialog
// below. Only attributes React does not render on these elements are set, so it leaves them alone; an
// element redrawn is named again.
"use strict";

(() => {
  const named = (root) => {
    for (const select of root.querySelectorAll("tr[data-param-name] select:not([aria-label])")) {
      select.setAttribute("aria-label", select.closest("tr").dataset.paramName);
    }
    for (const body of root.querySelectorAll("textarea.body-param__text:not([aria-label])")) {
      body.setAttribute("aria-label", "Request body");
    }
    for (const table of root.querySelectorAll("table.responses-table[role=region]:not([aria-label])")) {
      const summary = table.closest(".opblock")?.querySelector(".opblock-summary");
      const method = summary?.querySelector(".opblock-summary-method")?.textContent ?? "";
      const path = summary?.querySelector(".opblock-summary-path")?.dataset.path ?? "";
      table.setAttribute("aria-label", `Responses of ${method} ${path}`.trim());
    }
    // The Authorize dialog: a dialog named by its heading, its close button named, its headings in order,
    // its Authorize and Logout buttons named by their own words (their aria-label, "Apply credentials",
    // hides them).
    for (const dialog of root.querySelectorAll(".modal-ux:not([role])")) {
      dialog.setAttribute("role", "dialog");
      dialog.setAttribute("aria-modal", "true");
      dialog.setAttribute("aria-label", dialog.querySelector(".modal-ux-header h3")?.textContent ?? "Authorize");
    }
    for (const close of root.querySelectorAll(".modal-ux .close-modal:not([aria-label])")) {
      close.setAttribute("aria-label", "Close");
    }
    // "Authorized" (an h6 under the scheme's h4, once a token is given) a level below the h4.
    for (const heading of root.querySelectorAll(".modal-ux h6:not([aria-level])")) {
      heading.setAttribute("aria-level", "5");
    }
    for (const button of root.querySelectorAll(".modal-ux .modal-btn[aria-label]")) {
      button.removeAttribute("aria-label");
    }
  };
  const root = document.getElementById("swagger-ui");
  // aria-label too: React sets a button's again when it turns from Authorize to Logout.
  new MutationObserver(() => named(root)).observe(root, {
    childList: true,
    subtree: true,
    attributes: true,
    attributeFilter: ["aria-label"],
  });
})();
