/**
 * Headers of one connection, not of the message (RFC 9110 §7.6.1), and those the proxying
 * side sets itself: never passed on when a request or an answer crosses into or out of an
 * isolate.
 */
export const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'content-length']);
