/**
 * No control characters (C0, DEL, C1) and no unpaired UTF-16 surrogate: SQLite stores text as
 * UTF-8, where a lone surrogate becomes U+FFFD, so the read models would hold another string
 * than the event. Surrogate pairs (emoji and other astral characters) are fine. (Here, without
 * the GraphQL types, for the CLI too.)
 */
export const PRINTABLE = /^(?:[^\u0000-\u001f\u007f-\u009f\ud800-\udfff]|[\ud800-\udbff][\udc00-\udfff])*$/;
