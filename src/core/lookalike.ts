/**
 * Names that look alike to a person: what an app registering itself may not share with an
 * operator's app. Two names look alike when they are equal after NFKC (full-width
 * and styled letters become plain ones), case folding and the confusable skeleton of Unicode
 * TR39 §4 (Cyrillic а and Latin a, Greek Ρ and Latin P, rn and m, l and I), with runs of
 * spaces as one. The skeleton's table is Unicode's confusables.txt, as the `unhomoglyph`
 * package keeps it; it is loaded on the first comparison, not at start (most servers never
 * register an app).
 */

let skeleton: Promise<(text: string) => string> | undefined;

function loadSkeleton(): Promise<(text: string) => string> {
  return (skeleton ??= import('unhomoglyph').then((module) => module.default));
}

/**
 * The keys under which `name` is compared. Case folding and the skeleton do not commute (the
 * skeleton maps capital I to l but leaves i alone), so each name has two: folded then
 * skeletonised, which finds ADMIN in Admin, and skeletonised then folded, which finds PAYPAI
 * in PayPal. Two names look alike when they share a key.
 */
export async function lookalikeKeys(name: string): Promise<readonly [string, string]> {
  const toSkeleton = await loadSkeleton();
  const plain = name.normalize('NFKC').replace(/\s+/gu, ' ').trim();
  return [toSkeleton(plain.toLowerCase()).toLowerCase(), toSkeleton(plain).toLowerCase()];
}

/** Whether `name` looks like one of `others` (as `lookalikeKeys` compares them); the first it looks like, or null. */
export async function lookalikeOf(name: string, others: readonly string[]): Promise<string | null> {
  const [folded, skeletal] = await lookalikeKeys(name);
  for (const other of others) {
    const [otherFolded, otherSkeletal] = await lookalikeKeys(other);
    if (folded === otherFolded || skeletal === otherSkeletal) return other;
  }
  return null;
}
