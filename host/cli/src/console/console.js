// Warden console: reload the approvals page when the number of pending
// approvals changes (no inline script: the page's CSP allows this file only).
(function () {
  var page = document.body.getAttribute("data-pending");
  if (page === null) { return; }
  var shown = Number(page);
  setInterval(function () {
    fetch("/console/pending.json", { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (answer) {
        if (answer && answer.pending !== shown) { window.location.reload(); }
      })
      .catch(function () {});
  }, 2000);
})();
