import cliProgress from 'cli-progress';

export interface Progress {
  increment(by?: number): void;
  update(value: number, total?: number): void;
  stop(): void;
}

/** A progress bar (cli-progress) when stdout is a terminal; silent otherwise (logs and CI stay clean). */
export function startProgress(label: string, total: number): Progress {
  if (!process.stdout.isTTY || total === 0) return { increment() {}, update() {}, stop() {} };
  const bar = new cliProgress.SingleBar(
    { format: `${label} [{bar}] {percentage}% | {value}/{total} | ETA {eta_formatted}`, hideCursor: true, clearOnComplete: false },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0);
  return {
    increment: (by = 1) => bar.increment(by),
    update: (value, newTotal) => {
      if (newTotal !== undefined) bar.setTotal(newTotal);
      bar.update(value);
    },
    stop: () => bar.stop(),
  };
}
