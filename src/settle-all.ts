/**
 * Waits for every promise, then rejects with the first failure, if any: none is still
 * running when the caller goes on (to close what they use, or to answer).
 */
export async function settleAll(promises: Promise<unknown>[]): Promise<void> {
  const ends = await Promise.allSettled(promises);
  const failed = ends.find((end): end is PromiseRejectedResult => end.status === 'rejected');
  if (failed) throw failed.reason;
}
