// Forms that say what is wrong where the eye is (labeling/templatetags/form_errors.py): when a page comes
// back with a summary of its form's errors, focus moves to the summary (a screen reader reads its heading
// and list); each link in it moves focus to its field, the field's label scrolled into view. A list of
// boxes with "select all" and "none" (templates/_field.html) ticks or clears every box at once. Without
// this script the links still scroll to their fields and the boxes still tick one by one.
(function () {
  "use strict";

  if (window.assayForms) return; // included once per summary and per list of boxes: run once
  window.assayForms = true;

  function control(target) {
    if (target.matches("input, select, textarea, button")) return target;
    return target.querySelector("input:not([type=hidden]), select, textarea, button") || target;
  }

  function caption(field) {
    const label = field.id ? document.querySelector('label[for="' + CSS.escape(field.id) + '"]') : null;
    const set = field.closest("fieldset");
    return (set && set.querySelector("legend")) || label || field;
  }

  document.addEventListener("click", function (event) {
    const link = event.target.closest("[data-error-summary] a[href^='#']");
    if (link) {
      const target = document.getElementById(decodeURIComponent(link.getAttribute("href").slice(1)));
      if (!target) return;
      event.preventDefault();
      const field = control(target);
      if (!field.matches("input, select, textarea, button, [tabindex]")) field.setAttribute("tabindex", "-1");
      caption(field).scrollIntoView({ block: "start" });
      field.focus({ preventScroll: true });
      return;
    }
    const button = event.target.closest(".check-all-none button[data-check]");
    if (button) {
      const on = button.dataset.check === "all";
      button.closest("fieldset").querySelectorAll("input[type=checkbox]").forEach(function (box) {
        if (!box.disabled) box.checked = on;
      });
    }
  });

  function ready() {
    document.querySelectorAll(".check-all-none").forEach(function (tools) {
      tools.hidden = false;
    });
    const summary = document.querySelector("[data-error-summary]");
    if (summary) summary.focus();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ready);
  else ready();
})();
