// Which of a task's questions the annotator has had on screen. A question nobody saw must not be
// answered 0: Submit takes the answer only once every question has been on screen, whole, between
// the top bar and the dock (which cover the page's top and bottom); until then it brings the next
// unseen question up.

// Whether a box (top, bottom) counts as seen in the visible band (top, bottom): whole, or, when
// it is taller than the band, filling it.
export function isSeen(box, band) {
  const visible = Math.min(box.bottom, band.bottom) - Math.max(box.top, band.top);
  return visible >= Math.min(box.bottom - box.top, band.bottom - band.top) - 1;
}

// `rows`: the questions' elements. `band()`: the visible band in viewport coordinates.
// `onChange(unseen)`: the number of questions not seen yet, whenever it changes.
export function createReach({ rows, band, onChange }) {
  const seen = rows.map(() => false);
  let unseen = rows.length;
  let frame = 0;

  function check() {
    frame = 0;
    const visible = band();
    let changed = false;
    rows.forEach((row, i) => {
      if (!seen[i] && isSeen(row.getBoundingClientRect(), visible)) {
        seen[i] = true;
        unseen -= 1;
        changed = true;
      }
    });
    if (changed) onChange(unseen);
  }
  const later = () => {
    if (!frame) frame = requestAnimationFrame(check);
  };
  window.addEventListener("scroll", later, { passive: true });
  window.addEventListener("resize", later);
  // The page moves without a scroll too: a banner above the task comes or goes, the sentence
  // unfolds, the dock grows. Any change of the page's size or of a question's place on screen
  // checks again.
  const resized = typeof ResizeObserver === "function" ? new ResizeObserver(later) : null;
  const moved = typeof IntersectionObserver === "function" ? new IntersectionObserver(later, { threshold: [0, 0.25, 0.5, 0.75, 1] }) : null;
  for (const node of [document.body, ...rows]) resized?.observe(node);
  for (const row of rows) moved?.observe(row);
  onChange(unseen);
  check();

  return {
    check,
    get unseen() {
      return unseen;
    },
    // Scrolls the first unseen question to just below the top bar; returns its index (or -1).
    reveal() {
      const i = seen.indexOf(false);
      if (i < 0) return -1;
      const offset = rows[i].getBoundingClientRect().top - band().top - 8;
      window.scrollBy({ top: offset, behavior: "instant" });
      check();
      return i;
    },
    stop() {
      window.removeEventListener("scroll", later);
      window.removeEventListener("resize", later);
      resized?.disconnect();
      moved?.disconnect();
      cancelAnimationFrame(frame);
    },
  };
}
