import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { dataConverter } from '../src/temporal/client';
import { EncryptionCodec } from '../src/temporal/codec';
import { testSettings } from './support/settings';

const HISTORIES = path.join(__dirname, '..', '..', 'test', 'fixtures', 'histories');
/** The throwaway key the recorded runs' payloads are sealed with (test data, nothing else). */
const RECORDED_KEY = 'nOS6KgTk0wYvGTzQxZ33Llb5TBuy/GHNdbtJNgtDOoo=';

/** Entity workflows open at an upgrade are replayed by the new worker: what earlier versions recorded must replay. */
describe('entity workflow histories recorded by earlier versions', function () {
  this.timeout(60_000);
  const replay = (file: string, workflowId: string) =>
    Worker.runReplayHistory({ workflowBundle: { code: readFileSync(testSettings().bundle, 'utf8') }, dataConverter: dataConverter(new EncryptionCodec(RECORDED_KEY)) }, temporal.api.history.v1.History.decode(gunzipSync(readFileSync(path.join(HISTORIES, file)))), workflowId);

  it('replays a directory run of 2f57189 (creations written to no read model) without a nondeterminism error', async function () {
    // Two organizations and two users, created through the API.
    await replay('directory-2f57189.bin.gz', 'directory');
  });

  it('replays an installation run of 2f57189 (500 changes a run) without a nondeterminism error', async function () {
    // Installed, edited twice, its secret rotated, paused, deleted.
    await replay('installation-2f57189.bin.gz', 'installation/ins_dA1xcziRi6xY2AGZ');
  });
});
