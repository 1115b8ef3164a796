// firstfault: copy buttons. A button with data-copy-target="ID" copies the text of the element with that id.
"use strict";

function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    return navigator.clipboard.writeText(text);
  }
  // plain http on a LAN address is not a secure context: fall back to a selected textarea
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.appendChild(area);
  area.select();
  const ok = document.execCommand("copy");
  document.body.removeChild(area);
  return ok ? Promise.resolve() : Promise.reject(new Error("copy refused"));
}

document.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-copy-target]");
  if (!button) return;
  const source = document.getElementById(button.dataset.copyTarget);
  if (!source) return;
  const text = source.textContent.trim();
  button.dataset.copied = text;  // what was copied, for people and tests alike
  copyText(text).then(
    () => { button.textContent = "Copied"; button.classList.add("copied"); },
    () => { button.textContent = "Select and copy"; }
  ).finally(() => setTimeout(() => { button.textContent = "Copy"; button.classList.remove("copied"); }, 2000));
});
