import { INTEGRATION_BRAND } from '../runtime';

/** Component ids (or event types) a report may carry; more is not a real integration. */
export const MAX_COMPONENTS = 200;

/**
 * The main module of an inspection isolate: platform code, evaluated before the bundle,
 * which it imports only inside the request. It captures every intrinsic it uses first, so
 * a bundle that poisons JSON, Array.prototype, Object.prototype or Response cannot forge
 * the report, and it reads own data properties only, never inherited getters; the host
 * still checks the report against a schema. What the bundle's
 * getters and Proxy traps may do is bounded by the deadline and the memory limit.
 */
export const INSPECTOR_SOURCE = `
const stringify = JSON.stringify;
const isArray = Array.isArray;
const getOwnDescriptor = Object.getOwnPropertyDescriptor;
const hasOwn = Object.hasOwn;
const ReportResponse = Response;
const BRAND = ${JSON.stringify(INTEGRATION_BRAND)};
const MAX = ${MAX_COMPONENTS};

function report(text) {
  return new ReportResponse(text);
}
function failure(kind, message) {
  return report('{"ok":false,"kind":' + stringify(kind) + ',"error":' + stringify(message) + '}');
}
// Own data properties only: what Object.prototype getters add is not the export's.
function own(object, key) {
  const descriptor = getOwnDescriptor(object, key);
  return descriptor !== undefined && hasOwn(descriptor, 'value') ? descriptor.value : undefined;
}
// An own array of strings as JSON items; undefined if not one, null if too long.
function strings(list) {
  if (!isArray(list)) return undefined;
  const count = own(list, 'length');
  if (typeof count !== 'number' || count > MAX) return null;
  let out = '';
  for (let i = 0; i < count; i++) {
    const item = own(list, i);
    if (typeof item !== 'string') return undefined;
    out += (i === 0 ? '' : ',') + stringify(item);
  }
  return out;
}
function messageOf(error) {
  try {
    const message = typeof error === 'object' && error !== null ? error.message : error;
    return typeof message === 'string' ? message : 'an exception';
  } catch {
    return 'an exception';
  }
}

export default Object.freeze({
  async fetch() {
    let namespace;
    try {
      namespace = await import('./integration.js');
    } catch (error) {
      return failure('throws', messageOf(error));
    }
    try {
      const exported = own(namespace, 'default');
      if (typeof exported !== 'object' || exported === null || own(exported, BRAND) !== true) return failure('not_integration', '');
      const components = strings(own(exported, 'componentIds'));
      const events = strings(own(exported, 'eventTypes'));
      if (components === undefined || events === undefined) return failure('not_integration', '');
      if (components === null || events === null) return failure('too_many', '');
      return report('{"ok":true,"componentIds":[' + components + '],"eventTypes":[' + events + ']}');
    } catch (error) {
      return failure('throws', messageOf(error));
    }
  },
});
`;
