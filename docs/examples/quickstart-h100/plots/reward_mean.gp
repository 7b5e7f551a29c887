# reward/mean: written by sparserl; run `gnuplot reward_mean.gp` to redraw.
set terminal pngcairo noenhanced size 900,520 font 'sans,10'
set output '/work/main/docs/examples/quickstart-h100/plots/reward_mean.png'
set title 'reward/mean'
set xlabel 'step'
set ylabel 'reward/mean'
set grid
set key outside right top
set datafile missing 'NaN'
plot '/work/main/docs/examples/quickstart-h100/plots/reward_mean.dat' index 0 using 1:2 with linespoints pt 7 ps 0.6 lw 2 lc rgb '#0072B2' title 'rl'
