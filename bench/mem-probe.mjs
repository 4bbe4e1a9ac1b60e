// Preloaded into the Baton service by the memory scenario (`node --expose-gc --import bench/mem-probe.mjs`).
// On SIGUSR2 it runs full garbage collections and writes process.memoryUsage() to $BENCH_MEM_FILE.
import { writeFileSync } from 'node:fs';

const file = process.env.BENCH_MEM_FILE;
if (file) {
  process.on('SIGUSR2', () => {
    for (let i = 0; i < 3; i++) globalThis.gc?.();
    writeFileSync(file, JSON.stringify({ at: Date.now(), ...process.memoryUsage() }));
  });
}
