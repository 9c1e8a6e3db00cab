"""mqdashboard: a light web dashboard over the admin layer (client.admin_ops), served by aiohttp."""
