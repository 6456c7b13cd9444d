import { readFileSync } from 'node:fs';
import path from 'node:path';

/** The package version, sent in User-Agent and shown in the OpenAPI document. */
export const PLATFORM_VERSION: string = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')).version;
