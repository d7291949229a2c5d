(() => {
  if (window.ragshieldAnnotateHotkeys) return;
  window.ragshieldAnnotateHotkeys = true;
  const targets = $targets;
  const noteId = $note_id;
  const rootId = $root_id;
  const notTyped = ["checkbox", "radio", "button", "submit", "range", "color", "file"];
  const isTyping = (el) => !!el && (el.isContentEditable ||
    ["TEXTAREA", "SELECT"].includes(el.tagName) ||
    (el.tagName === "INPUT" && !notTyped.includes(el.type)));
  const isShown = (el) => !!el && el.getClientRects().length > 0;
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && event.target.closest && event.target.closest("#" + noteId)) {
      event.target.blur();
      return;
    }
    if (event.defaultPrevented || event.repeat) return;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (isTyping(event.target) || isTyping(document.activeElement)) return;
    const id = targets[event.key.toLowerCase()];
    if (!id || !isShown(document.getElementById(rootId))) return;
    const el = document.getElementById(id);
    if (!el) return;
    if (id === noteId) {
      const box = el.querySelector("textarea") || el;
      event.preventDefault();
      box.focus();
      return;
    }
    const button = el.tagName === "BUTTON" ? el : el.querySelector("button");
    if (!button || button.disabled) return;
    event.preventDefault();
    button.click();
  });
})();
