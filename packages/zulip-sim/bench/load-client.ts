// A keep-alive HTTP load generator, run in its own process by sim-bench.ts so that the
// server under test keeps a core (and its RSS) to itself. Prints one JSON line.
import { Agent, request } from 'node:http';

interface Job {
  url: string;
  path: string;
  method: 'GET' | 'POST';
  authorization?: string;
  mode: 'throughput' | 'latency';
  /** For POST /messages: stream and topic prefix to send to. */
  send?: { stream: string; topicPrefix: string; mention: string };
  total: number;
  concurrency: number;
}

const job = JSON.parse(process.argv[2] ?? '{}') as Job;
const agent = new Agent({ keepAlive: true, maxSockets: job.concurrency });
const target = new URL(job.path, job.url);

function once(i: number): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {};
    if (job.authorization) headers.authorization = job.authorization;
    let body: string | undefined;
    if (job.send) {
      body = new URLSearchParams({
        type: 'stream',
        to: job.send.stream,
        topic: `${job.send.topicPrefix}${i % 50}`,
        content: `http message ${i} with **bold**, a link https://example.org/${i} and ${i % 10 === 0 ? job.send.mention : 'no mention'}`,
      }).toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const req = request(target, { method: job.method, agent, headers }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function throughput(total: number): Promise<Record<string, number>> {
  let next = 0;
  let errors = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: job.concurrency }, async () => {
      while (next < total) {
        const r = await once(next++);
        if (r.status !== 200) errors++;
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  return { requests: total, seconds, perSecond: total / seconds, errors };
}

async function latency(total: number): Promise<Record<string, number>> {
  const times: number[] = [];
  let bytes = 0;
  let errors = 0;
  for (let i = 0; i < total; i++) {
    const start = performance.now();
    const r = await once(i);
    times.push(performance.now() - start);
    bytes = r.bytes;
    if (r.status !== 200) errors++;
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] as number;
  return { requests: total, medianMs: at(0.5), p95Ms: at(0.95), bytes, errors };
}

const warmup = Math.min(200, Math.ceil(job.total / 10));
if (job.mode === 'throughput') await throughput(warmup);
else await latency(Math.min(5, job.total));
const result = job.mode === 'throughput' ? await throughput(job.total) : await latency(job.total);
process.stdout.write(`${JSON.stringify(result)}\n`);
agent.destroy();
