import { Inject, Injectable } from '@nestjs/common';
import { BATON_CONFIG, type BatonConfig } from '../config/config.js';

/** What one admitted request holds: its body as declared, then what its answer reads in. */
export interface HeldBytes {
  /** Counts `bytes` more (an answer's stored values as its budget charges them). */
  add(bytes: number): void;
  /** Gives everything back (once; later calls do nothing). */
  release(): void;
}

/**
 * The bytes this instance's GraphQL requests hold at once, and the bound on them
 * (`MAX_BYTES_IN_FLIGHT`). Each request is bounded on its own (`BODY_LIMIT_BYTES`,
 * `MAX_RESPONSE_BYTES`), but nothing bounded them together: a few thousand requests sending
 * large bodies slowly, or asking for large answers at once, could hold gigabytes.
 *
 * A request is admitted when it arrives (headers read, token checked) if what the others hold plus
 * its declared body fits; else it is answered 503 `RATE_LIMITED` before anything runs. Its answer's
 * stored values are counted as its answer budget charges them (answer-budget.ts), and everything it
 * held is given back when its response closes. The bound is a soft one: a request already admitted
 * is never cut short, and one request is always admitted when nothing is held (progress).
 */
@Injectable()
export class BytesInFlight {
  /** Bytes held by the requests in flight. */
  held = 0;
  /** Requests refused since the start. */
  refused = 0;

  constructor(@Inject(BATON_CONFIG) private readonly config: Pick<BatonConfig, 'maxBytesInFlight'>) {}

  get max(): number {
    return this.config.maxBytesInFlight;
  }

  /** Admits a request that brings `bytes` (undefined: refused; always admitted with the bound off). */
  admit(bytes: number): HeldBytes | undefined {
    const max = this.config.maxBytesInFlight;
    if (max > 0 && this.held > 0 && this.held + bytes > max) {
      this.refused++;
      return undefined;
    }
    let mine = bytes;
    this.held += bytes;
    return {
      add: (more) => {
        if (mine < 0 || !(more > 0)) return;
        mine += more;
        this.held += more;
      },
      release: () => {
        if (mine < 0) return;
        this.held -= mine;
        mine = -1;
      },
    };
  }
}
