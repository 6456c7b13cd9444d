import assert from 'node:assert/strict';
import pino from 'pino';
import { temporalRuntimeLogger } from '../src/temporal/runtime-logger';

describe('the Temporal SDK’s own logs, in pino', function () {
  /** The SDK's logger over a pino logger at `level`, and the lines it wrote as [level, message]. */
  function sdkLogger(level: string) {
    const lines: [number, string][] = [];
    const logger = pino({ level }, { write: (line: string) => void lines.push([JSON.parse(line).level, JSON.parse(line).msg]) });
    return { sdk: temporalRuntimeLogger(logger), lines };
  }

  it('keeps its warnings, but notes what the platform does by design (an activity-only worker for retry batches) as info, shown at debug', function () {
    for (const [level, expected] of [
      ['info', [[40, 'Activity failed']]],
      ['debug', [[30, 'No workflows registered, not polling for workflow tasks'], [40, 'Activity failed']]],
    ] as const) {
      const { sdk, lines } = sdkLogger(level);
      sdk.warn('No workflows registered, not polling for workflow tasks', { taskQueue: 'platform-retries' });
      sdk.warn('Activity failed');
      assert.deepEqual(lines, expected, level);
    }
  });
});
