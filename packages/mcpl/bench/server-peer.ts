// The MCPL side of the stdio bench, as its own process: a server on stdin/stdout that registers
// its channel once ready and runs `channels/incoming` rounds when its `run` tool is called.
import { stdioServerTransport } from '../src/index.js';
import { benchServer, channel } from './shared.js';

const { server } = benchServer();
const session = await server.connect(stdioServerTransport());
session.on('close', () => process.exit(0));
if (await session.whenReady()) await session.registerChannels([channel]);
