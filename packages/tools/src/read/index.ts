import type { z } from 'zod';
import type { ToolServices } from '../services.js';
import type { ToolDefinition } from '../tool.js';
import { fetchAroundTool } from './fetch-around.js';
import { fetchAttachmentTool } from './fetch-attachment.js';
import { fetchHistoryTool } from './fetch-history.js';
import { findUserTool } from './find-user.js';
import { getChannelHistoryTool } from './get-channel-history.js';
import { getMessageTool } from './get-message.js';
import { getMessageLinkTool } from './get-message-link.js';
import { getStreamTopicsTool } from './get-stream-topics.js';
import { getUserProfileTool } from './get-user-profile.js';
import { listAttachmentsTool } from './list-attachments.js';
import { listEmojisTool } from './list-emojis.js';
import { listStreamMembersTool } from './list-stream-members.js';
import { listStreamsTool } from './list-streams.js';
import { listUsersTool } from './list-users.js';
import { searchMessagesTool } from './search-messages.js';

/** The tools that read the realm: history, search, single messages, streams, people, emoji, files. */
export const readTools: readonly ToolDefinition<z.ZodObject, z.ZodObject, ToolServices>[] = [
  fetchHistoryTool,
  fetchAroundTool,
  getChannelHistoryTool,
  searchMessagesTool,
  getMessageTool,
  getMessageLinkTool,
  listStreamsTool,
  getStreamTopicsTool,
  listStreamMembersTool,
  listUsersTool,
  findUserTool,
  getUserProfileTool,
  listEmojisTool,
  fetchAttachmentTool,
  listAttachmentsTool,
];
