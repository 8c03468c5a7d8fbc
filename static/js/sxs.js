// The side-by-side rater's page (templates/evaluation/study_task.html): keyboard-first. 1-7 choose the
// point of the scale (L much better ... R much better), the reason tags' letters toggle them, j and k flag
// junk in L's and R's top three, c goes to the note, Enter submits, u undoes, n goes to the next query.
// Every submit and undo carries the revision the page was drawn at, so a second tab is refused in words.
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
          say("Answered. Next query (n), or undo (u) to change it.");
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

  const tagKeys = {};
  form.querySelectorAll("input[name=reasons]").forEach(function (input) {
    tagKeys[input.dataset.key] = input;
  });

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) {
      if (event.target === note && event.key === "Enter" && (event.ctrlKey || event.metaKey)) submit();
      return;
    }
    if (event.target === note) {
      if (event.key === "Escape") note.blur();
      return;
    }
    if (event.target.tagName === "TEXTAREA" || (event.target.tagName === "INPUT" && event.target.type === "text")) return;
    const key = event.key;
    if (key === "Enter") {
      if (event.target.tagName === "A" || (event.target.tagName === "BUTTON" && event.target.type !== "submit")) return;
      event.preventDefault();
      submit();
    } else if (key === "u") {
      undo();
    } else if (key === "n") {
      window.location.href = root.dataset.nextUrl;
    } else if (answered || closed) {
      if (/^[1-7jkc]$/.test(key) || tagKeys[key]) say(closed || "Answered already: undo (u) first to change it.", true);
    } else if (/^[1-7]$/.test(key)) {
      const radio = form.querySelectorAll("input[name=preference]")[Number(key) - 1];
      radio.checked = true;
      radio.focus();
    } else if (tagKeys[key]) {
      tagKeys[key].checked = !tagKeys[key].checked;
    } else if (key === "j" || key === "k") {
      const box = document.getElementById(key === "j" ? "junk-left" : "junk-right");
      box.checked = !box.checked;
    } else if (key === "c") {
      event.preventDefault();
      note.focus();
    }
  });
})();
