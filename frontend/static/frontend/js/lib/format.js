// Numbers as the pages show them.

export const fmt = new Intl.NumberFormat();

// A share as a percentage with one decimal ("87.5 %"); "–" when unknown.
export const pct = (x) => (x === null || x === undefined || Number.isNaN(x) ? "–" : `${(100 * x).toFixed(1)} %`);

// A number with `digits` decimals, or "–" when unknown.
export const fixed = (x, digits) => (x === null || x === undefined ? "–" : Number(x).toFixed(digits));

// "1 check", "2 checks": a count and its noun (`plural` when adding an s will not do).
export const counted = (n, noun, plural = `${noun}s`) => `${fmt.format(n)} ${n === 1 ? noun : plural}`;
