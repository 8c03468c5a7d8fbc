// The calibration round's query picker (templates/labeling/calibration_list.html): the set's active queries
// as checkboxes grouped by stratum, a search that narrows them (by id, text or stratum; every word must
// match) and, per stratum, "choose all shown" and "none". Without this script the checkboxes still work.
(function () {
  "use strict";

  const picker = document.getElementById("query-picker");
  if (!picker) return;
  const search = document.getElementById("query-search");
  const count = document.getElementById("picker-count");
  picker.querySelectorAll("[data-needs-script]").forEach(function (element) {
    element.hidden = false;
  });

  function recount() {
    const n = picker.querySelectorAll("input[name=queries]:checked").length;
    count.textContent = n + (n === 1 ? " query" : " queries") + " chosen";
  }

  function shownItems(group) {
    return Array.from(group.querySelectorAll(".picker-item")).filter(function (item) {
      return !item.hidden;
    });
  }

  search.addEventListener("input", function () {
    const words = search.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    picker.querySelectorAll(".picker-group").forEach(function (group) {
      let any = false;
      group.querySelectorAll(".picker-item").forEach(function (item) {
        const text = (item.textContent + " " + group.dataset.stratum).toLowerCase();
        const hit = words.every(function (word) {
          return text.includes(word);
        });
        item.hidden = !hit;
        any = any || hit;
      });
      group.hidden = !any;
    });
  });

  picker.addEventListener("click", function (event) {
    const button = event.target.closest(".pick-all, .pick-none");
    if (!button) return;
    const on = button.classList.contains("pick-all");
    shownItems(button.closest(".picker-group")).forEach(function (item) {
      item.querySelector("input").checked = on;
    });
    recount();
  });
  picker.addEventListener("change", recount);
  recount();
})();
