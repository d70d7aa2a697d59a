// Copy buttons for the snippets (<pre data-copy>). The pages work without this script: the
// snippets are plain text to select. Loaded from this registry only (the CSP allows no other
// script, and no inline one).
"use strict";
document.querySelectorAll("pre[data-copy]").forEach(function (pre) {
  var button = document.createElement("button");
  button.type = "button";
  button.className = "copy";
  button.textContent = "Copy";
  button.setAttribute("aria-label", "Copy to the clipboard");
  button.addEventListener("click", function () {
    var done = function (label) {
      button.textContent = label;
      setTimeout(function () { button.textContent = "Copy"; }, 2000);
    };
    if (!navigator.clipboard) { done("Select and copy"); return; }
    navigator.clipboard.writeText(pre.textContent).then(
      function () { done("Copied"); },
      function () { done("Select and copy"); }
    );
  });
  var wrapper = document.createElement("div");
  wrapper.className = "copyable";
  pre.parentNode.insertBefore(wrapper, pre);
  wrapper.appendChild(button);
  wrapper.appendChild(pre);
});
