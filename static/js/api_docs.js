// Swagger UI's page (templates/drf_spectacular/swagger_ui.html): names for the controls and regions
// Swagger UI draws without one, as an operation opens or is tried out. An enum parameter's <select> is
// named after its parameter, the request body's editor "Request body", a response table (role="region",
// one per operation) after its operation, e.g. "Responses of GET /api/v1/runs/". Only aria-label is set,
// an attribute React does not render here, so it leaves it alone; an element redrawn is named again.
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
  };
  const root = document.getElementById("swagger-ui");
  new MutationObserver(() => named(root)).observe(root, { childList: true, subtree: true });
})();
