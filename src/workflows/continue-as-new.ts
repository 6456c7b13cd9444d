import { allHandlersFinished, condition, workflowInfo } from '@temporalio/workflow';

/**
 * Entity workflows live as long as what they model; they hand their state to a fresh run
 * after `limit` messages (or when the server suggests it) so that history stays bounded.
 * Waits for handlers in flight first, so no update is lost across the hand-over.
 */
export class HistoryBudget {
  private handled = 0;

  constructor(private readonly limit: number) {}

  spend(): void {
    this.handled += 1;
  }

  exhausted(): boolean {
    return this.handled >= this.limit || workflowInfo().continueAsNewSuggested;
  }

  async drained(): Promise<void> {
    await condition(allHandlersFinished);
  }
}
