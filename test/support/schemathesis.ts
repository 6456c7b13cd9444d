import path from 'node:path';
import { pythonVenv } from './python-venv';

/** Pinned: a new release may generate other cases from the same seed. */
export const SCHEMATHESIS_VERSION = '4.32.5';

/** schemathesis's `st`, from its virtual environment (see pythonVenv). */
export async function schemathesis(): Promise<string> {
  return path.join(await pythonVenv('schemathesis', SCHEMATHESIS_VERSION), 'bin', 'st');
}
