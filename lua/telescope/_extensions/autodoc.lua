-- :Telescope autodoc (loaded by telescope only; telescope is never a dependency of autodoc).
return require('telescope').register_extension({
  exports = {
    autodoc = function(opts)
      require('autodoc.sources.telescope').search(opts)
    end,
    related = function(opts) -- :Telescope autodoc related: the sections related to the one under the cursor
      require('autodoc.related').pick('autodoc.sources.telescope', opts)
    end,
  },
})
