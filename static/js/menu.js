// The top bar's menu button (templates/base.html): below 600 px the navigation and "Log out" fold behind
// it (static/css/assay.css). Without this script the button stays hidden and the menu unfolded.
// The button says whether the menu is open (aria-expanded); Escape in the top bar closes the open menu
// and gives the focus back to the button.
(function () {
  "use strict";

  const button = document.getElementById("menu-button");
  const menu = document.getElementById("site-menu");
  if (!button || !menu) return;

  function setOpen(open) {
    button.setAttribute("aria-expanded", open ? "true" : "false");
  }

  button.hidden = false;
  button.addEventListener("click", function () {
    setOpen(button.getAttribute("aria-expanded") !== "true");
  });
  button.parentElement.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && button.getAttribute("aria-expanded") === "true") {
      event.stopPropagation();
      setOpen(false);
      button.focus();
    }
  });
})();
