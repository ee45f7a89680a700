import type { z } from 'zod';
import type { ToolServices } from '../services.js';
import type { ToolDefinition } from '../tool.js';
import { addReactionTool } from './add-reaction.js';
import { deleteMessageTool } from './delete-message.js';
import { editMessageTool } from './edit-message.js';
import { markReadTool } from './mark-read.js';
import { removeReactionTool } from './remove-reaction.js';
import { resolveTopicTool } from './resolve-topic.js';
import { sendDmTool } from './send-dm.js';
import { sendMessageTool } from './send-message.js';
import { subscribeTool } from './subscribe.js';
import { unsubscribeTool } from './unsubscribe.js';
import { uploadFileTool } from './upload-file.js';

/** The tools that change the realm (or the bot's subscriptions). */
export const writeTools: readonly ToolDefinition<z.ZodObject, z.ZodObject, ToolServices>[] = [
  sendMessageTool,
  sendDmTool,
  uploadFileTool,
  editMessageTool,
  deleteMessageTool,
  addReactionTool,
  removeReactionTool,
  resolveTopicTool,
  markReadTool,
  subscribeTool,
  unsubscribeTool,
];
