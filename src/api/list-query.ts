import { isId } from '../ids';
import { badRequest } from './errors';
import { isDateTime } from './validation';

/** An RFC 3339 time (ISO 8601 with its offset) of years 0001-9999 as Unix ms; undefined if not one. */
export function isoTime(value: string): number | undefined {
  if (!isDateTime(value)) return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms) || ms < Date.parse('0001-01-01T00:00:00Z') || ms > Date.parse('9999-12-31T23:59:59Z')) return undefined;
  return ms;
}

export const TIME_MESSAGE = 'must be an RFC 3339 time with its offset, such as 2026-11-22T10:00:00Z';

/** What a list route's query may hold besides `limit` and `pageToken`, which every list takes. */
export interface ListQueryRules {
  ids?: readonly string[];
  times?: readonly string[];
  /** Field -> the values it takes. */
  choices?: Record<string, readonly string[]>;
  pageSize: { default: number; max: number };
}

/** The list query checked, every broken field named in one 400; answers the page size. */
export function checkListQuery(query: Record<string, string | undefined>, rules: ListQueryRules): number {
  const details = [];
  for (const field of rules.ids ?? []) if (query[field] !== undefined && !isId(query[field]!)) details.push({ field, message: 'must be an id' });
  for (const [field, values] of Object.entries(rules.choices ?? {})) if (query[field] !== undefined && !values.includes(query[field]!)) details.push({ field, message: `must be one of ${values.join(', ')}` });
  for (const field of rules.times ?? []) if (query[field] !== undefined && isoTime(query[field]!) === undefined) details.push({ field, message: TIME_MESSAGE });
  if (query.pageToken !== undefined && !/^[A-Za-z0-9_-]{1,4096}\.[A-Za-z0-9_-]{22}$/.test(query.pageToken)) details.push({ field: 'pageToken', message: 'must be a token from a previous page' });
  const { max } = rules.pageSize;
  if (query.limit !== undefined && !(/^\d{1,4}$/.test(query.limit) && Number(query.limit) >= 1 && Number(query.limit) <= max)) details.push({ field: 'limit', message: `must be a whole number from 1 to ${max}` });
  if (details.length) throw badRequest(`invalid query: ${details.map((d) => `${d.field} ${d.message}`).join('; ')}`, details);
  return query.limit === undefined ? rules.pageSize.default : Number(query.limit);
}
