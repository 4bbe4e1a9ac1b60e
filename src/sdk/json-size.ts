/**
 * `Buffer.byteLength(JSON.stringify(text))`, counted in one pass without building either: a
 * report's decision commands are megabytes of JSON full of quotes, and sizing them by stringifying
 * them again took several times as long and a copy of each as garbage.
 *
 * Per UTF-16 unit, as JSON.stringify writes it and UTF-8 encodes it: `"` and `\` take 2 bytes
 * (escaped), \b \t \n \f \r 2, other controls below 0x20 6 (`\u00XX`), other ASCII 1, up to
 * U+07FF 2, other BMP characters 3, a surrogate pair 4, and a lone surrogate 6 (JSON.stringify
 * writes it as `\uDXXX`, since Node 12); plus the two quotes around the string.
 */
export function jsonStringBytes(text: string): number {
  let bytes = 2;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) {
      if (c >= 0x20) bytes += c === 0x22 || c === 0x5c ? 2 : 1;
      else bytes += c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d ? 2 : 6;
    } else if (c < 0x800) bytes += 2;
    else if (c < 0xd800 || c > 0xdfff) bytes += 3;
    else if (c <= 0xdbff && i + 1 < length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 6;
  }
  return bytes;
}
