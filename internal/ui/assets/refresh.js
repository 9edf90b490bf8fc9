// Reloads the status page every data-refresh seconds of <body> (0: never).
(function () {
  var seconds = Number(document.body.getAttribute("data-refresh")) || 0;
  if (seconds > 0) {
    setTimeout(function () { location.reload(); }, seconds * 1000);
  }
})();
