"""xetile_dsl.tools"""
