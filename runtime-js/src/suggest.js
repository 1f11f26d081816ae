// "Did you mean": a port of `promptc.facts.suggest.suggestions` (Damerau–Levenshtein, optimal string
// alignment; within 1 edit for words of up to five characters, 2 for longer ones).

function editDistance(a, b) {
  let prev2 = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i, ...new Array(b.length).fill(0)];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) cur[j] = Math.min(cur[j], prev2[j - 2] + 1);
    }
    prev2 = prev;
    prev = cur;
  }
  return prev[b.length];
}

export function suggestions(word, candidates, limit = word.length <= 5 ? 1 : 2, n = 3) {
  const scored = [];
  for (const candidate of [...new Set(candidates)].sort()) {
    if (candidate === word || Math.abs(candidate.length - word.length) > limit) continue;
    const distance = editDistance(word, candidate);
    if (distance <= limit) scored.push([distance, candidate]);
  }
  scored.sort((x, y) => x[0] - y[0] || (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0));
  return scored.slice(0, n).map(([, candidate]) => candidate);
}
