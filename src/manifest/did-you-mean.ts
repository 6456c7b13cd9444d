/** Edit distance (insertions, deletions, substitutions; adjacent swaps count one). */
export function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** The closest known word, if close enough to be a likely typo. */
export function didYouMean(word: string, known: readonly string[]): string | undefined {
  const lower = word.toLowerCase();
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(lower, candidate.toLowerCase());
    if (!best || distance < best.distance) best = { candidate, distance };
  }
  if (!best) return undefined;
  return best.distance <= Math.max(1, Math.floor(best.candidate.length / 3)) ? best.candidate : undefined;
}

export const unknownKeyMessage = (key: string, known: readonly string[]): string => {
  const suggestion = didYouMean(key, known);
  return `unknown key "${key}"${suggestion ? `; did you mean "${suggestion}"?` : ''}`;
};
