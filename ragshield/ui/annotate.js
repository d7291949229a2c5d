(() => {
  if (window.ragshieldAnnotateHotkeys) return;
  window.ragshieldAnnotateHotkeys = true;
  const targets = $targets;
  const sentenceTargets = $sentence_targets;
  const noteId = $note_id;
  const rootId = $root_id;
  const pickId = $pick_id;
  const modeClass = "annotate-sentence-mode";
  const notTyped = ["checkbox", "radio", "button", "submit", "range", "color", "file"];
  const isTyping = (el) => !!el && (el.isContentEditable ||
    ["TEXTAREA", "SELECT"].includes(el.tagName) ||
    (el.tagName === "INPUT" && !notTyped.includes(el.type)));
  const isShown = (el) => !!el && el.getClientRects().length > 0;
  const root = () => document.getElementById(rootId);
  const sentenceInputs = () => {
    const pick = document.getElementById(pickId);
    return pick && isShown(pick) ? [...pick.querySelectorAll("input[type=radio]")] : [];
  };
  // j / k and the arrows enter sentence mode on the picked sentence, then move between the
  // answer's sentences; there 1 / 2 / 3 mark the picked one. Esc leaves sentence mode, and
  // 1 / 2 / 3 label the sample again.
  const move = (step) => {
    const inputs = sentenceInputs();
    if (!inputs.length) return false;
    const entering = !root().classList.contains(modeClass);
    const now = inputs.findIndex((input) => input.checked);
    const next = now < 0 ? 0 : entering ? now
      : Math.min(Math.max(now + step, 0), inputs.length - 1);
    root().classList.add(modeClass);
    if (next !== now) inputs[next].click();
    inputs[next].closest("label")?.scrollIntoView({block: "nearest"});
    return true;
  };
  const moves = {j: 1, arrowdown: 1, k: -1, arrowup: -1};
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && event.target.closest && event.target.closest("#" + noteId)) {
      event.target.blur();
      return;
    }
    if (event.defaultPrevented || event.repeat) return;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (isTyping(event.target) || isTyping(document.activeElement)) return;
    if (!isShown(root())) return;
    const key = event.key.toLowerCase();
    if (key === "escape" && root().classList.contains(modeClass)) {
      root().classList.remove(modeClass);
      event.preventDefault();
      return;
    }
    if (key in moves) {
      if (move(moves[key])) event.preventDefault();
      return;
    }
    const inSentences = root().classList.contains(modeClass) && sentenceInputs().length > 0;
    const id = (inSentences && sentenceTargets[key]) || targets[key];
    if (!id) return;
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
