// Starts @zmcp/zulip-sim in its own process for the upload bench, so the simulator's copy of
// the uploaded file is not counted against the bench's memory. Prints one JSON line with the
// site and credentials, then runs until its stdin closes.
import { startZulipSim } from '@zmcp/zulip-sim';

const BOT = 'bench-bot@zulip.example';
const maxFileUploadMib = Number(process.argv[2] ?? '256');

const sim = await startZulipSim({
  maxFileUploadMib,
  rateLimit: false,
  seed: (realm) => {
    realm.addUser({ fullName: 'Bench Bot', email: BOT, isBot: true, botType: 1 });
  },
});
process.stdout.write(`${JSON.stringify(sim.credentials(BOT))}\n`);
process.stdin.resume();
process.stdin.on('end', () => {
  void sim.close().then(() => process.exit(0));
});
