-- Headless Neovim (0.7.2) as a real LSP client: open one file, attach spade's language server, wait until the
-- published diagnostics satisfy the test's condition, write them out as JSON and quit.
-- Driven by environment variables so the test owns every path: SPADE_NVIM_FILE, SPADE_NVIM_ROOT,
-- SPADE_NVIM_CMD (a JSON list), SPADE_NVIM_OUT, SPADE_NVIM_MIN (diagnostics wanted), SPADE_NVIM_READY (a
-- Lua pattern one message must match), SPADE_NVIM_TIMEOUT_MS.
local env = vim.env
local out = env.SPADE_NVIM_OUT
local function finish(result)
  local handle = assert(io.open(out, 'w'))
  handle:write(vim.json.encode(result))
  handle:close()
  vim.cmd('qa!')
end

local ok_start, err = pcall(function()
  vim.cmd('edit ' .. vim.fn.fnameescape(env.SPADE_NVIM_FILE))
  local buf = vim.api.nvim_get_current_buf()
  local client_id = vim.lsp.start_client({
    name = 'spade',
    cmd = vim.json.decode(env.SPADE_NVIM_CMD),
    root_dir = env.SPADE_NVIM_ROOT,
  })
  assert(client_id, 'the language server did not start')
  vim.lsp.buf_attach_client(buf, client_id)
  local wanted = tonumber(env.SPADE_NVIM_MIN)
  local ready = env.SPADE_NVIM_READY
  local function is_ready()
    local diagnostics = vim.diagnostic.get(buf)
    if #diagnostics < wanted then
      return false
    end
    for _, d in ipairs(diagnostics) do
      if string.find(d.message, ready) then
        return true
      end
    end
    return false
  end
  local ready_in_time = vim.wait(tonumber(env.SPADE_NVIM_TIMEOUT_MS), is_ready, 50)
  local diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(diagnostics, {
      lnum = d.lnum, col = d.col, end_lnum = d.end_lnum, end_col = d.end_col,
      severity = d.severity, message = d.message, source = d.source, code = d.code,
    })
  end
  local client = vim.lsp.get_client_by_id(client_id)
  local result = {
    ready = ready_in_time,
    diagnostics = diagnostics,
    server_name = client and client.server_capabilities and 'attached' or 'detached',
  }
  vim.lsp.stop_client(client_id)
  vim.wait(2000, function() return vim.lsp.get_client_by_id(client_id) == nil end, 50)
  finish(result)
end)
if not ok_start then
  finish({ ready = false, error = tostring(err), diagnostics = {} })
end
