import { condition, defineSignal, proxyActivities, setHandler } from '@temporalio/workflow';

/** The least a durable hand-over can be on Temporal: a signal to a running workflow, which runs an activity for it. */
export const floorSignal = defineSignal<[number]>('floor');

const { reached } = proxyActivities<{ reached(i: number): Promise<void> }>({ startToCloseTimeout: '10 seconds' });

export async function floorWorkflow(): Promise<void> {
  const queue: number[] = [];
  setHandler(floorSignal, (i) => void queue.push(i));
  for (;;) {
    await condition(() => queue.length > 0);
    await reached(queue.shift()!);
  }
}
