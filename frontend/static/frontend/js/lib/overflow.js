// Scroll hints: a `.table-wrap` whose table is wider than the screen fades out on the side that
// has more (classes `more-left` / `more-right`, drawn by the stylesheet), so a phone user sees
// there are columns to swipe to. Watches `root` for tables rendered into it later.

function update(wrap) {
  const max = wrap.scrollWidth - wrap.clientWidth;
  wrap.classList.toggle("more-left", max > 1 && wrap.scrollLeft > 1);
  wrap.classList.toggle("more-right", max > 1 && wrap.scrollLeft < max - 1);
}

export function scrollHints(root) {
  let frame = 0;
  const all = () => {
    frame = 0;
    root.querySelectorAll(".table-wrap").forEach(update);
  };
  const later = () => {
    if (!frame) frame = requestAnimationFrame(all);
  };
  // Scroll events do not bubble: listen in the capture phase.
  root.addEventListener("scroll", (event) => event.target.classList?.contains("table-wrap") && update(event.target), { capture: true, passive: true });
  window.addEventListener("resize", later);
  new MutationObserver(later).observe(root, { childList: true, subtree: true });
  later();
}
