// The side-by-side rater's page (templates/evaluation/studies/study_task.html): keyboard-first, in the keys of
// labeling/keyboard.py (static/js/keys.js reads them; the help lists them). 1-7 choose the point of the
// scale (L much better ... R much better), the reason tags' letters toggle them, h and l flag junk in
// L's and R's top three, c goes to the note, Enter submits, u undoes, n goes to the next query (warning
// once while a choice is not submitted). Every submit and undo carries the revision the page was drawn
// at, so a second tab is refused in words.
(function () {
  "use strict";

  const root = document.getElementById("sxs");
  if (!root) return;
  const form = document.getElementById("sxs-form");
  const message = document.getElementById("sxs-message");
  const undoButton = document.getElementById("sxs-undo");
  const submitButton = document.getElementById("sxs-submit");
  const note = document.getElementById("sxs-note");
  let revision = Number(root.dataset.revision);
  let answered = root.dataset.answered === "true";
  // A closed study's page says so (data-closed holds the words); nothing is sent from it.
  const closed = root.dataset.closed || "";
  let busy = false;
  const keyFor = window.AssayKeys.keyFor;
  const shownAt = performance.now();

  // The page's CSRF token, as base.html gives it to htmx.
  function csrfToken() {
    return (JSON.parse(document.body.getAttribute("hx-headers") || "{}") || {})["X-CSRFToken"] || "";
  }

  function say(text, isError) {
    message.textContent = text;
    message.classList.toggle("error", Boolean(isError));
  }

  function inputs() {
    return Array.from(form.querySelectorAll("input, textarea"));
  }

  function setAnswered(state) {
    answered = state;
    root.dataset.answered = state ? "true" : "false";
    inputs().forEach(function (input) {
      input.disabled = state;
    });
    submitButton.disabled = state;
    undoButton.disabled = !state;
  }

  function post(url, body) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken() },
      body: JSON.stringify(body),
    }).then(function (response) {
      return response.json().then(
        function (data) {
          return { ok: response.ok, data: data };
        },
        function () {
          return { ok: false, data: { message: "The server answered " + response.status + ": try again." } };
        },
      );
    });
  }

  function submit() {
    if (closed) return say(closed, true);
    if (busy || answered) return;
    const chosen = form.querySelector("input[name=preference]:checked");
    if (!chosen) {
      say("Choose a point of the scale first (1 to 7).", true);
      return;
    }
    busy = true;
    const body = {
      revision: revision,
      preference: Number(chosen.value),
      reasons: Array.from(form.querySelectorAll("input[name=reasons]:checked")).map(function (i) {
        return i.value;
      }),
      junk_left: document.getElementById("junk-left").checked,
      junk_right: document.getElementById("junk-right").checked,
      note: note.value,
      time_spent_ms: Math.round(performance.now() - shownAt),
    };
    say("Saving…");
    post(root.dataset.answerUrl, body)
      .then(function (result) {
        if (result.ok) {
          revision = result.data.revision;
          setAnswered(true);
          say("Answered. Next query (" + keyFor("next_query") + "), or undo (" + keyFor("undo") + ") to change it.");
          document.getElementById("sxs-next").focus();
        } else {
          say(result.data.message || "Not saved.", true);
        }
      })
      .catch(function () {
        say("Not saved: the server could not be reached. Try again.", true);
      })
      .finally(function () {
        busy = false;
      });
  }

  function undo() {
    if (closed) return say(closed, true);
    if (busy || !answered) return;
    busy = true;
    post(root.dataset.undoUrl, { revision: revision })
      .then(function (result) {
        if (result.ok) {
          revision = result.data.revision;
          setAnswered(false);
          say("Undone: answer again.");
          const chosen = form.querySelector("input[name=preference]:checked");
          (chosen || form.querySelector("input[name=preference]")).focus();
        } else {
          say(result.data.message || "Not undone.", true);
        }
      })
      .catch(function () {
        say("Not undone: the server could not be reached. Try again.", true);
      })
      .finally(function () {
        busy = false;
      });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    submit();
  });
  undoButton.addEventListener("click", undo);

  // A choice made and not submitted: leaving (n, a link, closing the tab) warns once.
  function unsavedWords() {
    if (answered || closed) return "";
    const chosen = inputs().some(function (input) {
      return input.tagName === "TEXTAREA" ? input.value.trim() !== "" : input.checked;
    });
    if (!chosen) return "";
    return "Your answer is not submitted: " + keyFor("submit") + " submits it, or leave again (" + keyFor("next_query") + ") to go on without it.";
  }

  const guard = window.AssayKeys.guard({
    unsaved: unsavedWords,
    say: function (words) {
      say(words, true);
    },
  });
  form.addEventListener("input", guard.rearm);
  form.addEventListener("change", guard.rearm);

  const tags = {};
  form.querySelectorAll("input[name=reasons]").forEach(function (input) {
    tags[input.value] = input;
  });

  // The note takes its own keys (Esc leaves it, Ctrl+Enter submits from it), as does any text box; a
  // focused link or button keeps its Enter.
  function intercept(event) {
    if (event.target === note) {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) submit();
      else if (event.key === "Escape") note.blur();
      return true;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return true;
    if (event.target.tagName === "TEXTAREA" || (event.target.tagName === "INPUT" && event.target.type === "text")) return true;
    if (event.key === "Enter") {
      return event.target.tagName === "A" || (event.target.tagName === "BUTTON" && event.target.type !== "submit");
    }
    return false;
  }

  // A key that would change the answer, on a page that takes none now, says why.
  function changing(run) {
    return function (arg, event) {
      if (answered || closed) {
        say(closed || "Answered already: undo (" + keyFor("undo") + ") first to change it.", true);
        return;
      }
      run(arg, event);
    };
  }

  function toggle(box) {
    box.checked = !box.checked;
    guard.rearm();
  }

  window.AssayKeys.listen({
    intercept: intercept,
    actions: {
      answer: changing(function (digit) {
        const radio = form.querySelectorAll("input[name=preference]")[digit - 1];
        if (!radio) return;
        radio.checked = true;
        radio.focus();
        guard.rearm();
      }),
      reason: changing(function (tag) {
        if (tags[tag]) toggle(tags[tag]);
      }),
      junk_left: changing(function () {
        toggle(document.getElementById("junk-left"));
      }),
      junk_right: changing(function () {
        toggle(document.getElementById("junk-right"));
      }),
      note: changing(function (arg, event) {
        event.preventDefault();
        note.focus();
      }),
      submit: function (arg, event) {
        event.preventDefault();
        submit();
      },
      undo: undo,
      next_query: function () {
        guard.go(root.dataset.nextUrl, "next");
      },
    },
  });
})();
