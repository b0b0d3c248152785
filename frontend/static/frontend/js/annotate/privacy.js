// Private projects (issue 13): each count is randomized on this device before it is kept or sent.
//
// The server sends, with each private task, `privacy.release[N][o]` = P(release o | true count N)
// for the task's window and number of asked tags (the one definition of the mechanism is the
// server's, learning/core/privacy.py). The page draws each asked tag's released value from the
// row of its true count with crypto.getRandomValues, and the answer it keeps in the outbox and
// sends holds only `released` values and the mechanism's parameters: the true counts never leave
// this function.

// A uniform number in [0, 1) with 53 random bits from the browser's cryptographic generator.
export function cryptoUniform() {
  const words = crypto.getRandomValues(new Uint32Array(2));
  return (words[0] * 2 ** 21 + (words[1] >>> 11)) / 2 ** 53;
}

// The value o drawn from `distribution` (probabilities of 0, 1, …) by the inverse of its
// cumulative sum at `u` in [0, 1); the last value with mass takes what rounding leaves.
export function sample(distribution, u) {
  let total = 0;
  let last = 0;
  for (let o = 0; o < distribution.length; o++) {
    if (distribution[o] <= 0) continue;
    last = o;
    total += distribution[o];
    if (u < total) return o;
  }
  return last;
}

// The answer `{counts}` of a task as it may leave the page: unchanged for a project that is not
// private; else `{released, privacy}`, each count replaced by a draw from its release row.
export function privatize(task, answer, uniform = cryptoUniform) {
  if (!task.privacy || !answer.counts) return answer;
  const { release, mechanism, alpha } = task.privacy;
  const released = {};
  for (const [name, n] of Object.entries(answer.counts)) released[name] = sample(release[n], uniform());
  return { released, privacy: { mechanism, alpha } };
}
