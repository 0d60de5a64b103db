// The inspector's own script (a static file: the Content-Security-Policy allows no inline script).
// Copy buttons of long ids ({% long_id %}): the whole id to the clipboard; delegated, so rows htmx swaps in work too.
document.documentElement.classList.remove("no-js");

function copied(button) {
  button.textContent = "Copied";
  window.setTimeout(() => { button.textContent = "Copy"; }, 1500);
}

function copyByCommand(text, button) {
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.className = "sr-only";
  document.body.append(area);
  area.select();
  try {
    if (document.execCommand("copy")) copied(button);
  } finally {
    area.remove();
  }
}

document.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-copy]");
  if (!button) return;
  event.preventDefault();
  const text = button.dataset.copy;
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(() => copied(button), () => copyByCommand(text, button));
  } else {
    copyByCommand(text, button);
  }
});
