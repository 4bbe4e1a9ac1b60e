import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * A token reads `baton_<tokenId without dashes>_<secret>`: the id finds the record, the
 * secret is checked against its SHA-256 in constant time. 256 bits of randomness make a slow
 * hash unnecessary.
 */
const FORMAT = /^baton_([0-9a-f]{32})_([A-Za-z0-9_-]{43})$/;

export function newTokenSecret(tokenId: string): { token: string; secretHash: string } {
  const secret = randomBytes(32).toString('base64url');
  return { token: `baton_${tokenId.replaceAll('-', '')}_${secret}`, secretHash: hashSecret(secret) };
}

export function parseToken(token: string): { tokenId: string; secret: string } | null {
  const match = FORMAT.exec(token);
  if (!match) return null;
  const hex = match[1];
  const tokenId = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return { tokenId, secret: match[2] };
}

export const hashSecret = (secret: string): string => createHash('sha256').update(secret).digest('hex');

export function secretMatches(secret: string, secretHash: string): boolean {
  const actual = Buffer.from(hashSecret(secret), 'hex');
  const expected = Buffer.from(secretHash, 'hex');
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
