// The rater pages' one keyboard language (labeling/keyboard.py; docs/labeling.md, "Keyboard"), shared by
// the grading page (static/js/grading.js) and the side-by-side page (static/js/sxs.js). The page's keys
// come from the table, through the JSON in #keymap: each key names an action, and a page's script only
// says what its actions do. Here too: the help (templates/_keys_help.html, the same dialog on every page:
// ? opens and closes it, Esc closes it, no other key acts behind it) and the warning, once, before a page
// with an unsaved choice is left by a key, a link or closing the tab (the second attempt goes).
(function () {
  "use strict";

  const source = document.getElementById("keymap");
  const keymap = source ? JSON.parse(source.textContent) : {};
  const help = document.getElementById("help");
  let before = null; // what had the focus when the help opened

  function actionOf(event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return null;
    const entry = keymap[event.key];
    return entry ? { name: entry[0], arg: entry[1] } : null;
  }

  // The key of an action as the page's words name it ("undo (u) first"): the first in the table's order.
  function keyFor(name) {
    const key = Object.keys(keymap).find(function (k) {
      return keymap[k][0] === name;
    });
    return key || "";
  }

  function helpOpen() {
    return Boolean(help && help.open);
  }

  function toggleHelp(show) {
    if (!help) return;
    const open = show === undefined ? !help.open : show;
    if (open && !help.open) {
      before = document.activeElement;
      help.showModal();
    } else if (!open && help.open) {
      help.close();
    }
  }

  if (help) {
    help.querySelector("#help-close").addEventListener("click", function () {
      toggleHelp(false);
    });
    // Esc closes a modal dialog by itself; either way the focus goes back where it was.
    help.addEventListener("close", function () {
      if (before && before.isConnected) before.focus({ preventScroll: true });
      before = null;
    });
  }

  // The page's keys: `page.intercept(event)` first (its text boxes and prompts: true when it took the
  // key), then `page.actions[name](arg, event)` for a key of the table. Help and Esc are handled here.
  function listen(page) {
    document.addEventListener("keydown", function (event) {
      const action = actionOf(event);
      if (helpOpen()) {
        if (action && action.name === "help") {
          event.preventDefault();
          toggleHelp(false);
        }
        return;
      }
      if (page.intercept && page.intercept(event)) return;
      if (!action) return;
      if (action.name === "help") {
        event.preventDefault();
        toggleHelp(true);
        return;
      }
      const run = page.actions[action.name];
      if (run) run(action.arg, event);
    });
  }

  // Leaving with an unsaved choice: `unsaved(how)` gives the words that say what would be lost ("" when
  // nothing would), `how` being "next" (the next-query key or link, data-leave="next"), "link" or
  // "unload" (closing the tab, a reload, a typed address: the browser asks). The first attempt warns,
  // the next goes; a change on the page (`rearm`) makes the next attempt warn again.
  function guard(options) {
    let warned = false;

    function mayLeave(how) {
      const words = options.unsaved(how);
      if (!words || warned) return true;
      warned = true;
      toggleHelp(false); // the words show on the page, not behind the help
      options.say(words);
      return false;
    }

    document.addEventListener("click", function (event) {
      const link = event.target.closest && event.target.closest("a[href]");
      if (!link || event.defaultPrevented || event.button !== 0) return;
      if (event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return; // another tab: nothing lost
      if (link.target || link.hasAttribute("download") || link.getAttribute("href").startsWith("#")) return;
      if (!mayLeave(link.dataset.leave || "link")) event.preventDefault();
    });

    window.addEventListener("beforeunload", function (event) {
      if (mayLeave("unload")) return;
      event.preventDefault();
      event.returnValue = ""; // the browser shows its own words; the page's say what is unsaved
    });

    return {
      go: function (url, how) {
        if (mayLeave(how)) window.location.href = url;
      },
      rearm: function () {
        warned = false;
      },
    };
  }

  window.AssayKeys = { listen: listen, guard: guard, keyFor: keyFor, toggleHelp: toggleHelp, helpOpen: helpOpen };
})();
