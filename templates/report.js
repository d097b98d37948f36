// Sortable layer tables: click (or Enter on) a header; numbers sort by their data-sort value.
(function () {
  "use strict";
  function sortBy(table, th, col) {
    var numeric = th.getAttribute("data-type") === "num";
    var current = th.getAttribute("aria-sort");
    var dir = current === "descending" ? 1 : (current === "ascending" ? -1 : (numeric ? -1 : 1));
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[col].getAttribute("data-sort");
      var y = b.cells[col].getAttribute("data-sort");
      if (numeric) {
        return dir * (parseFloat(x) - parseFloat(y));
      }
      return dir * x.localeCompare(y);
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) {
      h.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.tabIndex = 0;
      th.addEventListener("click", function () { sortBy(table, th, col); });
      th.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          sortBy(table, th, col);
        }
      });
    });
  });
  document.documentElement.setAttribute("data-ready", "true");
})();
