import type { InstallationIndex } from '../installations/read-model';
import type { InstallationProjection } from '../installations/types';

/**
 * An attempt batch's reads of its installations, each as read at or after its attempt's
 * time, so that a pause, a new URL or a rotated secret answered before an attempt applies
 * to it. Only the installations whose attempts are due are read: those asked for in one
 * turn of the event loop in one query, and a read started at or after an attempt's time
 * serves it. Reading all of a batch's installations at each time one of its attempts came
 * due made a shared lane's batch (up to 100 installations, their retries due at as many
 * times) read each of them at every one: beside 200 failing receivers, 29,000 installation
 * rows in 8 s, some 18 for each event ingested meanwhile. Asked once `at` has passed;
 * `together` false (a batch of one delivery, an ordered line's step) reads at once, not a
 * turn later.
 */
export function installationsAsOf(installations: Pick<InstallationIndex, 'getMany'>, together = true) {
  /** Each installation's latest read: when it was asked for (the read itself starts later). */
  const latest = new Map<string, { at: number; target: Promise<InstallationProjection | undefined> }>();
  /** The read being gathered this turn. */
  let gathering: { ids: Set<string>; targets: Promise<Map<string, InstallationProjection>> } | undefined;
  return function installationAsOf(id: string, at: number): Promise<InstallationProjection | undefined> {
    const known = latest.get(id);
    if (known && known.at >= at) return known.target;
    if (!gathering) {
      const ids = new Set<string>();
      const targets = (together ? new Promise<void>((resolve) => setImmediate(resolve)) : Promise.resolve()).then(() => {
        gathering = undefined;
        return installations.getMany([...ids]);
      });
      gathering = { ids, targets };
    }
    gathering.ids.add(id);
    const target = gathering.targets.then((targets) => targets.get(id));
    latest.set(id, { at: Date.now(), target });
    return target;
  };
}
