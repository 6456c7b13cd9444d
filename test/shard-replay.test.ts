import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { dataConverter } from '../src/temporal/client';
import { EncryptionCodec } from '../src/temporal/codec';
import { testSettings } from './support/settings';

const HISTORIES = path.join(__dirname, '..', '..', 'test', 'fixtures', 'histories');
/** The throwaway keys the recorded runs' payloads are sealed with (test data, nothing else). */
const RECORDED_KEY = 'h+CpnhFLCJ6ReMLq1Qh0vYJsougeaoPFRkRrToJC68Y=';
const EPOCH_RECORDED_KEY = '+GH8U8W+zK3WLxcM13WVOfXFf//KNknbkE7tmQRHj4o=';
const SHARED_RECORDED_KEY = 'm0xHNBK49TJCacYWV7tFSbO6vdPOoyNOQwtqaGKqCpY=';

/**
 * Workflow code changes must replay what earlier versions recorded: a shard run still open
 * at an upgrade is replayed by the new worker, and a difference fails it.
 */
describe('delivery shard histories recorded by earlier versions', function () {
  this.timeout(60_000);
  /** Histories recorded from the shard tests, whose stand-in workers seal nothing. */
  const replayPlain = async (file: string, workflowId: string) => {
    const history = temporal.api.history.v1.History.decode(gunzipSync(readFileSync(path.join(HISTORIES, file))));
    await Worker.runReplayHistory({ workflowBundle: { code: readFileSync(testSettings().bundle, 'utf8') } }, history, workflowId);
  };

  it('replays a run of 0.1.0 (update hand-overs, one batch per lane, retries on timers) without a nondeterminism error', async function () {
    // Recorded with the platform at 4c761b0: 60 events to two installations, one POST in five answered 500.
    const history = temporal.api.history.v1.History.decode(gunzipSync(readFileSync(path.join(HISTORIES, 'delivery-shard-0.1.0.bin.gz'))));
    await Worker.runReplayHistory({ workflowBundle: { code: readFileSync(testSettings().bundle, 'utf8') }, dataConverter: dataConverter(new EncryptionCodec(RECORDED_KEY)) }, history, 'delivery-shard/0');
  });

  it('replays an epoch run of 8f350da (a timer started in each workflow task and cancelled in the next, led retries) without a nondeterminism error', async function () {
    // Recorded with the platform at 8f350da: 100 events a second to one installation, one POST in five answered 500.
    const history = temporal.api.history.v1.History.decode(gunzipSync(readFileSync(path.join(HISTORIES, 'delivery-epoch-8f350da.bin.gz'))));
    await Worker.runReplayHistory({ workflowBundle: { code: readFileSync(testSettings().bundle, 'utf8') }, dataConverter: dataConverter(new EncryptionCodec(EPOCH_RECORDED_KEY)) }, history, 'delivery-shard/0/epoch');
  });

  it('replays an epoch run of 36df674 (six batches of one shared lane in flight at once) without a nondeterminism error', async function () {
    // Recorded with the workflows at 36df674 and stand-in attempts: 600 deliveries to 20 installations a hand-over said hang.
    const history = temporal.api.history.v1.History.decode(gunzipSync(readFileSync(path.join(HISTORIES, 'delivery-epoch-shared-36df674.bin.gz'))));
    await Worker.runReplayHistory({ workflowBundle: { code: readFileSync(testSettings().bundle, 'utf8') }, dataConverter: dataConverter(new EncryptionCodec(SHARED_RECORDED_KEY)) }, history, 'delivery-shard/0/epoch-shared');
  });

  it('replays an epoch run of c894f02 (what receivers found failing had queued moved to the shared lane) without a nondeterminism error', async function () {
    // Recorded from the shard test of patch queued-follow-lane, stand-in attempts, plain payloads: a hand-over's hint and two timed-out batches move queued deliveries.
    await replayPlain('delivery-epoch-follow-c894f02.bin.gz', 'delivery-shard/0/epoch-follow');
  });

  it('replays an epoch run of c894f02 (lanes kept through a batch failing fast within 2 s of an answer) without a nondeterminism error', async function () {
    // Recorded from a variant of the shard test of patch failing-after-answer (its third round to the 500-answering and the refusing receivers only, so the patch changes how many batches start), stand-in attempts, plain payloads.
    await replayPlain('delivery-epoch-grace-c894f02.bin.gz', 'delivery-shard/0/epoch-grace');
  });
});
