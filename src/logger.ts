import pino from 'pino';

export type Logger = pino.Logger;

/** Structured JSON logs; secrets and tokens are redacted wherever they appear by name. */
export function createLogger(level: string, name = 'platform'): Logger {
  return pino({
    name,
    level,
    redact: {
      paths: ['*.authorization', '*.secret', '*.token', '*.signingSecret', 'req.headers.authorization'],
      censor: '[redacted]',
    },
  });
}
